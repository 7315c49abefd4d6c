#!/bin/bash
#PBS -a 12241830
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
