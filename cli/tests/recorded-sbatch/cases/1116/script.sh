#!/bin/bash
#PBS -l naccelerators=2
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
