#!/bin/bash
#PBS -a 1830
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
